"""Round-robin fairness checker for an N:1 arbiter (``rtl_gen/common/axi_arbiter.py``).

Feed it every grant (a downstream address handshake) with the set of masters whose
``valid`` was high in that cycle.  The round-robin property checked: when master ``j``
is granted while masters ``W`` are waiting, every master of ``W`` is granted before
``j`` is granted again (AXI4 forbids withdrawing a ``valid``, so a waiting master keeps
waiting until it is served).  With every master requesting all the time this means
the grant counts never differ by more than one burst per round.
"""
from __future__ import annotations


class RoundRobinChecker:
    def __init__(self, n: int, name: str = "arbiter"):
        self.n, self.name = n, name
        self.waiting = [set() for _ in range(n)]   # masters that waited at j's last grant
        self.counts = [0] * n
        self.grants: list[tuple[int, int]] = []
        self.violations: list[str] = []

    def grant(self, t: int, j: int, requesting) -> None:
        if not 0 <= j < self.n:
            self.violations.append(f"{self.name}: cycle {t}: grant to master {j} of {self.n}")
            return
        if self.waiting[j]:
            self.violations.append(
                f"{self.name}: cycle {t}: master {j} granted again before master(s) "
                f"{sorted(self.waiting[j])} that were waiting at its previous grant")
        for w in self.waiting:
            w.discard(j)
        self.waiting[j] = {int(i) for i in requesting} - {j}
        self.counts[j] += 1
        self.grants.append((t, j))

    def check(self) -> None:
        assert not self.violations, (f"{len(self.violations)} round-robin violation(s); first: "
                                     f"{self.violations[0]}")
