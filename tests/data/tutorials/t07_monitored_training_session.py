import tempfile

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
rng = np.random.RandomState(7)
xs = rng.rand(32, 3).astype(np.float32)
ys = xs.sum(axis=1, keepdims=True)

x = tf.constant(xs)
w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - ys), name="loss")
step = tf.train.get_or_create_global_step()
train = tf.train.GradientDescentOptimizer(0.2).minimize(loss, global_step=step)

final = tf.train.FinalOpsHook([loss, w])
hooks = [tf.train.StopAtStepHook(last_step=12), final, tf.train.NanTensorHook(loss),
         tf.train.LoggingTensorHook({"loss": loss}, every_n_iter=5)]
runs = 0
with tf.train.MonitoredTrainingSession(checkpoint_dir=tempfile.mkdtemp(), hooks=hooks,
                                       save_checkpoint_steps=5,
                                       log_step_count_steps=None) as sess:
    while not sess.should_stop():
        sess.run(train)
        runs += 1
RESULT = {"runs": runs, "final_loss": float(final.final_ops_values[0]),
          "w": final.final_ops_values[1].tolist()}
