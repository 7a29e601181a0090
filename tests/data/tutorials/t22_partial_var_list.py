import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(22)
rng = np.random.RandomState(22)
xs = rng.randn(64, 6).astype(np.float32)
ys = xs[:, :2] * 0.5

x = tf.placeholder(tf.float32, [None, 6])
y = tf.placeholder(tf.float32, [None, 2])
frozen = tf.layers.dense(x, 8, activation=tf.nn.relu, name="frozen")
head = tf.layers.dense(frozen, 2, name="head")
loss = tf.losses.mean_squared_error(y, head)
head_vars = tf.trainable_variables("head")
train = tf.train.MomentumOptimizer(0.1, 0.5).minimize(loss, var_list=head_vars)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    frozen_before = sess.run(tf.trainable_variables("frozen"))
    losses = [float(sess.run([train, loss], {x: xs, y: ys})[1]) for _ in range(15)]
    frozen_after = sess.run(tf.trainable_variables("frozen"))
    RESULT = {"losses": losses, "head_vars": [v.op.name for v in head_vars],
              "frozen_unchanged": all(np.array_equal(a, b)
                                      for a, b in zip(frozen_before, frozen_after, strict=True))}
