import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(8)
rng = np.random.RandomState(8)
xs = rng.randn(128, 5).astype(np.float32)
ys = np.sin(xs[:, :1]) + xs[:, 1:2] ** 2

x = tf.placeholder(tf.float32, [None, 5])
y = tf.placeholder(tf.float32, [None, 1])
h = tf.layers.dense(x, 16, activation=tf.nn.tanh)
out = tf.layers.dense(h, 1)
loss = tf.losses.mean_squared_error(y, out)
train = tf.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = [float(sess.run([train, loss], {x: xs, y: ys})[1]) for _ in range(25)]
    RESULT = {"losses": losses}
