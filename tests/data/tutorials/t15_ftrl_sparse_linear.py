import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
rng = np.random.RandomState(15)
features = rng.randint(0, 40, size=(96, 4)).astype(np.int64)
clicks = (features[:, 0] < 10).astype(np.float32)

ids = tf.placeholder(tf.int64, [None, 4])
y = tf.placeholder(tf.float32, [None])
weights = tf.get_variable("weights", [40, 1], initializer=tf.zeros_initializer())
bias = tf.get_variable("bias", [], initializer=tf.zeros_initializer())
logits = tf.reduce_sum(tf.nn.embedding_lookup(weights, ids), axis=[1, 2]) + bias
loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
train = tf.train.FtrlOptimizer(0.5, l1_regularization_strength=0.01,
                               l2_regularization_strength=0.01).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = []
    for step in range(12):
        batch = slice((step * 32) % 96, (step * 32) % 96 + 32)
        losses.append(float(sess.run([train, loss], {ids: features[batch],
                                                     y: clicks[batch]})[1]))
    w = sess.run(weights)
    RESULT = {"losses": losses, "nonzero": int((w != 0).sum()), "weights": w.ravel().tolist()}
