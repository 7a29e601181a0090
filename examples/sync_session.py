"""TF 1.x style code outside an event loop: SyncSession blocks like tf.compat.v1.Session."""

import aioflow as af

g = af.Graph()
with g.as_default():
    a = af.placeholder(af.float32, shape=[], name="a")
    b = af.placeholder(af.float32, shape=[], name="b")
    hyp = af.sqrt(a * a + b * b, name="hypotenuse")

with af.SyncSession(graph=g) as sess:  # was: tf.compat.v1.Session(graph=g)
    print("hypotenuse(3, 4) =", sess.run(hyp, {a: 3.0, b: 4.0}))
    call = sess.make_callable(hyp, [a, b])
    print("hypotenuse(5, 12) =", call(5.0, 12.0))
