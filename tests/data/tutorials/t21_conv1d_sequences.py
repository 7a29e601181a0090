import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(21)
rng = np.random.RandomState(21)
signals = rng.randn(48, 12, 2).astype(np.float32)
labels = (signals[:, :, 0].mean(axis=1) > 0).astype(np.int64)

x = tf.placeholder(tf.float32, [None, 12, 2])
y = tf.placeholder(tf.int64, [None])
net = tf.layers.conv1d(x, 6, 3, activation=tf.nn.relu)
net = tf.layers.max_pooling1d(net, 2, 2)
net = tf.layers.flatten(net)
logits = tf.layers.dense(net, 2)
loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
train = tf.train.AdamOptimizer(0.01).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = [float(sess.run([train, loss], {x: signals, y: labels})[1]) for _ in range(15)]
    RESULT = {"losses": losses}
