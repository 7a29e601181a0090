import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(20)
rng = np.random.RandomState(20)
data = rng.rand(128, 16).astype(np.float32)

x = tf.placeholder(tf.float32, [None, 16])
code = tf.layers.dense(x, 4, activation=tf.nn.sigmoid, name="encoder")
recon = tf.layers.dense(code, 16, activation=tf.nn.sigmoid, name="decoder")
loss = tf.losses.mean_squared_error(x, recon)
train = tf.train.AdamOptimizer(0.02).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = []
    for step in range(25):
        batch = data[(step * 32) % 128:(step * 32) % 128 + 32]
        losses.append(float(sess.run([train, loss], {x: batch})[1]))
    RESULT = {"losses": losses, "code": sess.run(code, {x: data[:2]}).tolist()}
