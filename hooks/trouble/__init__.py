"""Pod trouble, found and given its grace: pods that cannot start, pods and children that do not exist, lost nodes.

``stuck`` reads why a pod cannot start and ``grace`` which of those troubles wait a moment;
``missing`` finds what was asked for and does not exist; ``lost`` reads pods whose node
stopped reporting; ``words`` lists them in a message. Pure: the clock reading is passed in.
"""
