import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(10)
rng = np.random.RandomState(10)
xs = 10 * rng.randn(64, 4).astype(np.float32)
ys = xs[:, :1] * 5.0

x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None, 1])
pred = tf.layers.dense(tf.layers.dense(x, 8, activation=tf.nn.relu), 1)
loss = tf.reduce_mean(tf.square(pred - y))
optimizer = tf.train.GradientDescentOptimizer(0.01)
grads_and_vars = optimizer.compute_gradients(loss)
grads, variables = zip(*grads_and_vars, strict=True)
clipped, norm = tf.clip_by_global_norm(grads, 1.0)
train = optimizer.apply_gradients(zip(clipped, variables, strict=True))

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    trace = []
    for _ in range(15):
        _, l, n = sess.run([train, loss, norm], {x: xs, y: ys})
        trace.append([float(l), float(n)])
    RESULT = {"trace": trace}
