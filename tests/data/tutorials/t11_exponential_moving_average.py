import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
rng = np.random.RandomState(11)
xs = rng.randn(32, 2).astype(np.float32)
ys = xs @ np.array([[1.5], [-0.5]], np.float32)

x = tf.placeholder(tf.float32, [None, 2])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
step = tf.train.get_or_create_global_step()
opt = tf.train.GradientDescentOptimizer(0.3).minimize(loss, global_step=step)
ema = tf.train.ExponentialMovingAverage(0.9, num_updates=step)
with tf.control_dependencies([opt]):
    train = ema.apply([w])
averaged = ema.average(w)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(10):
        sess.run(train, {x: xs, y: ys})
    RESULT = {"w": sess.run(w).tolist(), "average": sess.run(averaged).tolist(),
              "restore_names": sorted(ema.variables_to_restore())}
