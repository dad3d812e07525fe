"""Suites that hold one promise of the contract across several modules at once, not one module's behaviour.

Every recorded body folds (``test_corpus``); no hostile body breaks an adapter or a run
(``test_hostile_gateway``, its strategies in ``hostile``, and ``test_hostile_mapping`` below the wire);
no echoed secret leaks (``test_secret_scan``); a malformed call is guarded end to end
(``test_guarded_stream``); an answer goes out again unchanged (``test_roundtrip``). A test of one source
module belongs beside that module's other tests, at the path that mirrors it.
"""
