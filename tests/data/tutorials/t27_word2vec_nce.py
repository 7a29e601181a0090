import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(27)
vocab, dim, window = 50, 16, 2
rng = np.random.RandomState(27)
corpus = np.minimum(rng.zipf(1.3, size=2000) - 1, vocab - 1)
pairs = [(corpus[i], corpus[j]) for i in range(window, len(corpus) - window)
         for j in range(i - window, i + window + 1) if j != i]
pairs = np.array(pairs, dtype=np.int64)

center = tf.placeholder(tf.int32, [None])
context = tf.placeholder(tf.int64, [None, 1])
embeddings = tf.Variable(tf.random_uniform([vocab, dim], -1.0, 1.0), name="embeddings")
nce_weights = tf.Variable(tf.truncated_normal([vocab, dim], stddev=1.0 / np.sqrt(dim)),
                          name="nce_weights")
nce_biases = tf.Variable(tf.zeros([vocab]), name="nce_biases")
embed = tf.nn.embedding_lookup(embeddings, center)
loss = tf.reduce_mean(tf.nn.nce_loss(weights=nce_weights, biases=nce_biases, labels=context,
                                     inputs=embed, num_sampled=8, num_classes=vocab))
train = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
norm = tf.sqrt(tf.reduce_sum(tf.square(embeddings), 1, keepdims=True))
similarity = tf.matmul(embeddings[:5] / norm[:5], embeddings / norm, transpose_b=True)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = []
    for step in range(30):
        batch = pairs[step * 32:(step + 1) * 32]
        _, value = sess.run([train, loss], {center: batch[:, 0], context: batch[:, 1:]})
        losses.append(float(value))
    RESULT = {"losses": losses, "similarity": sess.run(similarity)}
