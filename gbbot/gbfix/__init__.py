"""`/gb-fix`: a maintainer's PR comment asks gbbot to push a verified fix commit. The pure parts
(the command, who may ask, what a patch may touch) and the edges the action's three stages use."""
