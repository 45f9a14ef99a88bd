"""Claims: a paper's checkable statements, decided from replicates against our results.

:mod:`fedrepro.claims.verdicts` computes a verdict from a check's replicates (an interval, then
holds / fails / undecided with the replicates that would decide); :mod:`fedrepro.claims.evaluate`
validates a paper's claims file and builds its verdict table; :mod:`fedrepro.claims.status` writes
the README's status block from the tables of a build.
"""
from fedrepro.claims.evaluate import (COLUMNS, KINDS, STATUS_COLUMNS, Depends, NotTestable, Outcome, evaluate, load_claims,
                                      load_results, status_table, test_text, to_markdown, validate_claims)
from fedrepro.claims.verdicts import (ALPHA, COMPARES, DEPENDS, FAILS, HOLDS, INCOMPLETE, UNAVAILABLE, UNDECIDED,
                                      VERDICTS, Decision,
                                      Replicates, accepted_range, decide)

__all__ = ["ALPHA", "COLUMNS", "COMPARES", "DEPENDS", "Depends", "FAILS", "HOLDS", "INCOMPLETE", "KINDS", "STATUS_COLUMNS", "UNAVAILABLE", "UNDECIDED",
           "VERDICTS", "Decision", "NotTestable", "Outcome", "Replicates", "accepted_range", "decide", "evaluate",
           "load_claims", "load_results", "status_table", "test_text", "to_markdown", "validate_claims"]
