"""The collaborators :class:`mnesis.session.MnesisSession` is composed of, one job each.

* :mod:`.validation`: validation of what callers hand a session
* :mod:`.state`: whether the session is still open
* :mod:`.meter`: the estimated size of the context view
* :mod:`.gate`: when compaction runs around a turn
* :mod:`.doom`: repeated identical tool calls
* :mod:`.writer`: building and persisting the messages of a turn
* :mod:`.model_round`: one model call (build, stub, stream under the timeout, store)
* :mod:`.turns`: ``send`` / ``stream`` / ``record`` and tool-call results
* :mod:`.tools`: running the model's ``lcm_*`` tool calls
* :mod:`.expansion`: sub-agent expansion (``lcm_expand_query``)
* :mod:`.opening`: creating and reading back the stored session row
* :mod:`.wiring`: the one place all of these are built and connected
* :mod:`.view`: the read side of the facade (its base class), over the wiring

Nothing here imports :mod:`mnesis.session` (the facade).
"""
