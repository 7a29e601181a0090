import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(12)
rng = np.random.RandomState(12)
xs = rng.randn(64, 6).astype(np.float32)
labels = rng.randint(0, 3, size=64).astype(np.int64)

x = tf.placeholder(tf.float32, [None, 6])
y = tf.placeholder(tf.int64, [None])


def l2(w):
    return 0.01 * tf.nn.l2_loss(w)


h = tf.layers.dense(x, 8, activation=tf.nn.relu, kernel_regularizer=l2)
logits = tf.layers.dense(h, 3, kernel_regularizer=l2)
tf.losses.sparse_softmax_cross_entropy(y, logits)
total = tf.losses.get_total_loss()
reg = tf.losses.get_regularization_loss()
train = tf.train.AdamOptimizer(0.02).minimize(total)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    trace = []
    for _ in range(15):
        _, t, r = sess.run([train, total, reg], {x: xs, y: labels})
        trace.append([float(t), float(r)])
    RESULT = {"trace": trace,
              "collections": [len(tf.losses.get_losses()),
                              len(tf.losses.get_regularization_losses())]}
