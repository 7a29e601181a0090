import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
rng = np.random.RandomState(17)
xs = rng.randn(40, 2).astype(np.float32)
ys = xs @ np.array([[3.0], [-2.0]], np.float32)

x = tf.placeholder(tf.float32, [None, 2])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
step = tf.train.get_or_create_global_step()
lr = tf.train.piecewise_constant(step, [5, 10], [0.1, 0.05, 0.01])
train = tf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=step)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    trace = []
    for _ in range(15):
        _, l, r = sess.run([train, loss, lr], {x: xs, y: ys})
        trace.append([float(l), float(r)])
    RESULT = {"trace": trace, "w": sess.run(w).tolist()}
