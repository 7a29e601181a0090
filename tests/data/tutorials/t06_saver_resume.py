import os
import tempfile

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
rng = np.random.RandomState(6)
xs = rng.rand(64, 4).astype(np.float32)
ys = xs @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)


def build():
    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.placeholder(tf.float32, [None, 1])
    w = tf.get_variable("w", [4, 1], initializer=tf.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    step = tf.train.get_or_create_global_step()
    train = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=step)
    return x, y, w, loss, step, train


directory = tempfile.mkdtemp()
with tf.Graph().as_default():
    x, y, w, loss, step, train = build()
    saver = tf.train.Saver(max_to_keep=2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(6):
            sess.run(train, {x: xs, y: ys})
            if i % 2 == 1:
                saver.save(sess, os.path.join(directory, "model"), global_step=step)
kept = sorted(os.path.basename(p) for p in tf.train.get_checkpoint_state(directory)
              .all_model_checkpoint_paths)

with tf.Graph().as_default():
    x, y, w, loss, step, train = build()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        saver.restore(sess, tf.train.latest_checkpoint(directory))
        resumed_at = int(sess.run(step))
        losses = [float(sess.run([train, loss], {x: xs, y: ys})[1]) for _ in range(4)]
        RESULT = {"kept": kept, "resumed_at": resumed_at, "losses": losses,
                  "w": sess.run(w).tolist()}
