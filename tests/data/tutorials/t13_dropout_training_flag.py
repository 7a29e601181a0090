import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(13)
rng = np.random.RandomState(13)
xs = rng.randn(64, 10).astype(np.float32)
labels = (xs[:, 0] > 0).astype(np.int64)

x = tf.placeholder(tf.float32, [None, 10])
y = tf.placeholder(tf.int64, [None])
training = tf.placeholder_with_default(False, [])
h = tf.layers.dense(x, 32, activation=tf.nn.relu)
h = tf.layers.dropout(h, rate=0.4, training=training, seed=1)
logits = tf.layers.dense(h, 2)
loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
train = tf.train.AdamOptimizer(0.01).minimize(loss)
kept = tf.nn.dropout(tf.ones([4, 5]), keep_prob=0.5, seed=2)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = [float(sess.run([train, loss], {x: xs, y: labels, training: True})[1])
              for _ in range(15)]
    RESULT = {"losses": losses, "eval": float(sess.run(loss, {x: xs, y: labels})),
              "mask": sess.run(kept).tolist()}
