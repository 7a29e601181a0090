import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
rng = np.random.RandomState(5)
words = rng.randint(0, 30, size=(128, 6)).astype(np.int32)
labels = (words.sum(axis=1) % 3).astype(np.int64)

ids = tf.placeholder(tf.int32, [None, 6])
y = tf.placeholder(tf.int64, [None])
embeddings = tf.get_variable("embeddings", [30, 8],
                             initializer=tf.random_uniform_initializer(-0.5, 0.5, seed=5))
pooled = tf.reduce_mean(tf.nn.embedding_lookup(embeddings, ids), axis=1)
w = tf.get_variable("w", [8, 3], initializer=tf.truncated_normal_initializer(seed=6))
logits = tf.matmul(pooled, w)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train = tf.train.AdagradOptimizer(0.3).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    before = sess.run(embeddings)
    losses = []
    for step in range(20):
        batch = slice((step * 16) % 128, (step * 16) % 128 + 16)
        losses.append(float(sess.run([train, loss], {ids: words[batch], y: labels[batch]})[1]))
    after = sess.run(embeddings)
    RESULT = {"losses": losses, "rows_changed": int((np.abs(after - before).sum(1) > 0).sum()),
              "embedding_sum": float(after.sum())}
