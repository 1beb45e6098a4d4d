"""`/gb-fix`: a maintainer's PR comment asks gbbot to push a verified fix commit. The pure parts
(the command, who may ask, what the replies say) and the conversation calls the action's three
stages use; checking, committing and pushing the fix are `gbbot.deliver`'s."""
