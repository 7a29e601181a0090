import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(24)
rng = np.random.RandomState(24)
xs = rng.randn(6, 5, 3).astype(np.float32)
lengths = np.array([5, 3, 4, 1, 5, 2], np.int32)
labels = (xs[:, 0, 0] > 0).astype(np.int64)

x = tf.placeholder(tf.float32, [None, 5, 3])
seq = tf.placeholder(tf.int32, [None])
y = tf.placeholder(tf.int64, [None])
(fw, bw), (state_fw, state_bw) = tf.nn.bidirectional_dynamic_rnn(
    tf.nn.rnn_cell.GRUCell(4), tf.nn.rnn_cell.GRUCell(4), x, sequence_length=seq,
    dtype=tf.float32)
logits = tf.layers.dense(tf.concat([state_fw, state_bw], 1), 2)
loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
train = tf.train.RMSPropOptimizer(0.01).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = [float(sess.run([train, loss], {x: xs, seq: lengths, y: labels})[1])
              for _ in range(8)]
    out_fw, out_bw = sess.run([fw, bw], {x: xs, seq: lengths})
    RESULT = {"losses": losses, "fw": out_fw.tolist(), "bw": out_bw.tolist(),
              "variables": [v.op.name for v in tf.trainable_variables()]}
