
2
xPlaceholder*
dtype0*
shape
:
3
dyPlaceholder*
dtype0*
shape
:

TanhTanhx*
T0
T
gradients/grad_ys_0Identitydy*&
 _has_manual_control_dependencies(*
T0
L
gradients/Tanh_grad/TanhGradTanhGradTanhgradients/grad_ys_0*
T0"ª