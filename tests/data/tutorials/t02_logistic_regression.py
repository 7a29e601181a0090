import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
rng = np.random.RandomState(1)
xs = rng.randn(200, 2).astype(np.float32)
labels = (xs[:, :1] + 0.5 * xs[:, 1:] > 0).astype(np.float32)

x = tf.placeholder(tf.float32, [None, 2])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
logits = tf.matmul(x, w) + b
loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.cast(logits > 0, tf.float32), y), tf.float32))
train = tf.train.GradientDescentOptimizer(1.0).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = [float(sess.run([train, loss], {x: xs, y: labels})[1]) for _ in range(40)]
    RESULT = {"losses": losses, "accuracy": float(sess.run(accuracy, {x: xs, y: labels})),
              "w": sess.run(w).tolist()}
