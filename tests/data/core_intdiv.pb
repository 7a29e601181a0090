
7
aPlaceholder*
dtype0*
shape:ÿÿÿÿÿÿÿÿÿ
7
bPlaceholder*
dtype0*
shape:ÿÿÿÿÿÿÿÿÿ
8
faPlaceholder*
dtype0*
shape:ÿÿÿÿÿÿÿÿÿ
8
fbPlaceholder*
dtype0*
shape:ÿÿÿÿÿÿÿÿÿ
#
floordivFloorDivab*
T0
#
floormodFloorModab*
T0
)
truncatedivTruncateDivab*
T0
)
truncatemodTruncateModab*
T0
%

floordiv_1FloorDivab*
T0
,
op_floordivIdentity
floordiv_1*
T0

modFloorModab*
T0
 
op_modIdentitymod*
T0

absAbsa*
T0

negNega*
T0

signSigna*
T0
!
maximumMaximumab*
T0

squareSquarea*
T0
'

f_floormodFloorModfafb*
T0
-
f_truncatemodTruncateModfafb*
T0
'

f_floordivFloorDivfafb*
T0"ª