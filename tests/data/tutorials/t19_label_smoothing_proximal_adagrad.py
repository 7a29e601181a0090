import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(19)
rng = np.random.RandomState(19)
xs = rng.randn(80, 5).astype(np.float32)
onehot = np.eye(4, dtype=np.float32)[rng.randint(0, 4, size=80)]

x = tf.placeholder(tf.float32, [None, 5])
y = tf.placeholder(tf.float32, [None, 4])
logits = tf.layers.dense(x, 4)
loss = tf.losses.softmax_cross_entropy(y, logits, label_smoothing=0.1)
train = tf.train.ProximalAdagradOptimizer(0.3, l1_regularization_strength=0.001,
                                          l2_regularization_strength=0.001).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = [float(sess.run([train, loss], {x: xs, y: onehot})[1]) for _ in range(20)]
    RESULT = {"losses": losses}
