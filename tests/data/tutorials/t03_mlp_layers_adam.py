import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(3)
rng = np.random.RandomState(3)
images = rng.rand(256, 64).astype(np.float32)
digits = (images[:, :10].argmax(axis=1)).astype(np.int64)

x = tf.placeholder(tf.float32, [None, 64], name="images")
y = tf.placeholder(tf.int64, [None], name="labels")
hidden = tf.layers.dense(x, 32, activation=tf.nn.relu, name="hidden")
logits = tf.layers.dense(hidden, 10, name="logits")
loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
correct = tf.equal(tf.argmax(logits, 1), y)
accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
global_step = tf.train.get_or_create_global_step()
train = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=global_step)

losses = []
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(30):
        batch = slice((step * 32) % 256, (step * 32) % 256 + 32)
        _, value = sess.run([train, loss], {x: images[batch], y: digits[batch]})
        losses.append(float(value))
    RESULT = {"losses": losses, "accuracy": float(sess.run(accuracy, {x: images, y: digits})),
              "step": int(sess.run(global_step)),
              "kernel_sum": float(sess.run(tf.reduce_sum(tf.trainable_variables()[0])))}
