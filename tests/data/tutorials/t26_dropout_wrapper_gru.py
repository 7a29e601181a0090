import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(26)
rng = np.random.RandomState(26)
xs = rng.randn(8, 6, 4).astype(np.float32)
ys = xs.sum(axis=(1, 2))[:, None].astype(np.float32)

x = tf.placeholder(tf.float32, [None, 6, 4])
y = tf.placeholder(tf.float32, [None, 1])
cell = tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.GRUCell(8), input_keep_prob=0.8,
                                     output_keep_prob=0.7, seed=5)
# one iteration at a time: the dropout masks are drawn in the steps' order
outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32, parallel_iterations=1)
pred = tf.layers.dense(state, 1)
loss = tf.losses.mean_squared_error(y, pred)
train = tf.train.AdamOptimizer(0.02).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = [float(sess.run([train, loss], {x: xs, y: ys})[1]) for _ in range(8)]
    RESULT = {"losses": losses}
