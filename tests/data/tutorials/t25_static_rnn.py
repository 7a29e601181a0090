import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(25)
rng = np.random.RandomState(25)
xs = rng.randn(4, 3, 2).astype(np.float32)

x = tf.placeholder(tf.float32, [None, 3, 2])
cell = tf.nn.rnn_cell.BasicRNNCell(5)
outputs, state = tf.nn.static_rnn(cell, tf.unstack(x, axis=1), dtype=tf.float32)
loss = tf.reduce_mean(tf.square(outputs[-1] - 0.5))
train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = [float(sess.run([train, loss], {x: xs})[1]) for _ in range(6)]
    RESULT = {"losses": losses, "state": sess.run(state, {x: xs}).tolist(),
              "variables": [v.op.name for v in tf.trainable_variables()]}
