import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(16)
rng = np.random.RandomState(16)
xs = rng.randn(64, 4).astype(np.float32)
ys = np.tanh(xs @ np.array([[1.0], [2.0], [-1.0], [0.5]], np.float32))

x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None, 1])
with tf.variable_scope("model", use_resource=True):
    h = tf.layers.dense(x, 8, activation=tf.nn.relu)
    out = tf.layers.dense(h, 1)
loss = tf.losses.mean_squared_error(y, out)
opt = tf.train.AdamOptimizer(0.05)
train = opt.minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    losses = [float(sess.run([train, loss], {x: xs, y: ys})[1]) for _ in range(20)]
    RESULT = {"losses": losses, "slots": opt.get_slot_names(),
              "variables": [v.op.name for v in opt.variables()]}
