
2
xPlaceholder*
shape
:*
dtype0
3
dyPlaceholder*
shape
:*
dtype0

TanhTanhx*
T0
T
gradients/grad_ys_0Identitydy*
T0*&
 _has_manual_control_dependencies(
L
gradients/Tanh_grad/TanhGradTanhGradTanhgradients/grad_ys_0*
T0"ª