import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(18)
rng = np.random.RandomState(18)
xs = rng.randn(60, 3).astype(np.float32)
ys = xs[:, :1] * 2.0 + np.where(rng.rand(60, 1) > 0.9, 10.0, 0.0).astype(np.float32)

x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
pred = tf.layers.dense(x, 1)
loss = tf.losses.huber_loss(y, pred, delta=1.0)
train = tf.train.AdagradOptimizer(0.5, initial_accumulator_value=0.1).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = [float(sess.run([train, loss], {x: xs, y: ys})[1]) for _ in range(20)]
    RESULT = {"losses": losses}
