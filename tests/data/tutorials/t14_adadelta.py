import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
rng = np.random.RandomState(14)
xs = rng.randn(50, 3).astype(np.float32)
ys = xs @ np.array([[0.5], [1.0], [-1.5]], np.float32)

x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.get_variable("w", [3, 1], initializer=tf.constant_initializer(0.1))
loss = tf.losses.absolute_difference(y, tf.matmul(x, w))
train = tf.train.AdadeltaOptimizer(5.0, rho=0.9, epsilon=1e-6).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = [float(sess.run([train, loss], {x: xs, y: ys})[1]) for _ in range(20)]
    RESULT = {"losses": losses, "w": sess.run(w).tolist()}
