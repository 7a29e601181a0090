import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(4)
rng = np.random.RandomState(4)
images = rng.rand(64, 8, 8, 1).astype(np.float32)
labels = (images.mean(axis=(1, 2, 3)) > 0.5).astype(np.int64)

x = tf.placeholder(tf.float32, [None, 8, 8, 1])
y = tf.placeholder(tf.int64, [None])
training = tf.placeholder_with_default(False, [], name="training")
net = tf.layers.conv2d(x, 4, 3, padding="same", use_bias=False)
net = tf.layers.batch_normalization(net, training=training)
net = tf.nn.relu(net)
net = tf.layers.max_pooling2d(net, 2, 2)
net = tf.layers.flatten(net)
logits = tf.layers.dense(net, 2)
loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
with tf.control_dependencies(update_ops):
    train = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss)

losses = []
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(20):
        batch = slice((step * 16) % 64, (step * 16) % 64 + 16)
        _, value = sess.run([train, loss], {x: images[batch], y: labels[batch],
                                            training: True})
        losses.append(float(value))
    moving = [v for v in tf.global_variables() if "moving" in v.name]
    RESULT = {"losses": losses,
              "eval_loss": float(sess.run(loss, {x: images, y: labels})),
              "moving": [sess.run(v).tolist() for v in moving]}
