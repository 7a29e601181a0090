import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(9)
rng = np.random.RandomState(9)
xs = rng.randn(64, 3).astype(np.float32)
ys = (xs @ np.array([[2.0], [-1.0], [0.5]], np.float32)) + 1.0

x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
pred = tf.layers.dense(x, 1)
loss = tf.reduce_mean(tf.square(pred - y))
step = tf.train.get_or_create_global_step()
lr = tf.train.exponential_decay(0.1, step, 5, 0.7, staircase=True)
train = tf.train.MomentumOptimizer(lr, 0.9, use_nesterov=True).minimize(loss, global_step=step)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    trace = [[float(v) for v in sess.run([loss, lr], {x: xs, y: ys})]]
    for _ in range(20):
        sess.run(train, {x: xs, y: ys})
        trace.append([float(v) for v in sess.run([loss, lr], {x: xs, y: ys})])
    RESULT = {"trace": trace}
