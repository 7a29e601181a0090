import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(23)
rng = np.random.RandomState(23)
vocab, steps, batch = 20, 6, 8
corpus = rng.randint(0, vocab, size=400).astype(np.int32)

inputs = tf.placeholder(tf.int32, [None, steps])
targets = tf.placeholder(tf.int32, [None, steps])
embedding = tf.get_variable("embedding", [vocab, 8],
                            initializer=tf.random_uniform_initializer(-0.1, 0.1, seed=1))
embedded = tf.nn.embedding_lookup(embedding, inputs)
cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicLSTMCell(16),
                                    tf.nn.rnn_cell.LSTMCell(16, use_peepholes=True)])
outputs, state = tf.nn.dynamic_rnn(cell, embedded, dtype=tf.float32)
logits = tf.layers.dense(tf.reshape(outputs, [-1, 16]), vocab)
loss = tf.losses.sparse_softmax_cross_entropy(tf.reshape(targets, [-1]), logits)
grads, variables = zip(*tf.train.AdamOptimizer(0.01).compute_gradients(loss), strict=True)
clipped, _ = tf.clip_by_global_norm(grads, 5.0)
train = tf.train.AdamOptimizer(0.01).apply_gradients(zip(clipped, variables, strict=True))

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = []
    for _ in range(8):
        start = rng.randint(0, len(corpus) - steps - 1, size=batch)
        x = np.stack([corpus[s:s + steps] for s in start])
        y = np.stack([corpus[s + 1:s + steps + 1] for s in start])
        losses.append(float(sess.run([train, loss], {inputs: x, targets: y})[1]))
    RESULT = {"losses": losses, "variables": [v.op.name for v in tf.trainable_variables()]}
