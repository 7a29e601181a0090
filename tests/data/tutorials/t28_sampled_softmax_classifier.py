import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(28)
num_classes, features, hidden = 200, 12, 24
rng = np.random.RandomState(28)
x_data = rng.normal(size=(256, features)).astype(np.float32)
y_data = (np.abs(x_data[:, :3]).sum(1) * 40).astype(np.int64) % num_classes

x = tf.placeholder(tf.float32, [None, features])
y = tf.placeholder(tf.int64, [None])
h = tf.layers.dense(x, hidden, activation=tf.nn.tanh,
                    kernel_initializer=tf.glorot_uniform_initializer(seed=1))
out_w = tf.get_variable("out_w", [num_classes, hidden],
                        initializer=tf.truncated_normal_initializer(stddev=0.1, seed=2))
out_b = tf.get_variable("out_b", [num_classes], initializer=tf.zeros_initializer())
sampled = tf.nn.sampled_softmax_loss(out_w, out_b, tf.expand_dims(y, 1), h, num_sampled=16,
                                     num_classes=num_classes)
loss = tf.reduce_mean(sampled)
full_logits = tf.matmul(h, out_w, transpose_b=True) + out_b
full_loss = tf.reduce_mean(
    tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=full_logits))
train = tf.train.AdamOptimizer(0.01).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = []
    for step in range(25):
        batch = slice((step * 32) % 256, (step * 32) % 256 + 32)
        _, value = sess.run([train, loss], {x: x_data[batch], y: y_data[batch]})
        losses.append(float(value))
    RESULT = {"sampled_losses": losses,
              "full_loss": float(sess.run(full_loss, {x: x_data, y: y_data})),
              "out_b": sess.run(out_b)}
