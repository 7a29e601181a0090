import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
rng = np.random.RandomState(0)
xs = rng.rand(100, 1).astype(np.float32)
ys = 3.0 * xs + 2.0 + 0.05 * rng.randn(100, 1).astype(np.float32)

x = tf.placeholder(tf.float32, [None, 1])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.zeros([1, 1]), name="w")
b = tf.Variable(tf.zeros([1]), name="b")
pred = tf.matmul(x, w) + b
loss = tf.reduce_mean(tf.square(pred - y))
train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)

losses = []
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(50):
        _, value = sess.run([train, loss], {x: xs, y: ys})
        losses.append(float(value))
    RESULT = {"losses": losses, "w": sess.run(w).tolist(), "b": sess.run(b).tolist()}
