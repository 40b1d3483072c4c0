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
        self.grants: list[tuple[int, int, frozenset]] = []   # (cycle, master, requesting)
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
        req = frozenset(int(i) for i in requesting)
        self.waiting[j] = set(req - {j})
        self.counts[j] += 1
        self.grants.append((t, j, req))

    def rotation_breaks(self, grants=None) -> list[str]:
        """Consecutive grants that both happened with every master requesting must go to
        consecutive masters (j, then j+1 mod n): one burst per master per round."""
        g = self.grants if grants is None else grants
        full = frozenset(range(self.n))
        out = []
        for (t0, a, r0), (t1, b, r1) in zip(g, g[1:]):
            if r0 == full and r1 == full and b != (a + 1) % self.n:
                out.append(f"{self.name}: cycle {t1}: master {b} after master {a} with all requesting")
        return out

    def reset(self) -> None:
        """A bus reset withdraws every request: nobody is waiting any more."""
        for w in self.waiting:
            w.clear()

    def check(self) -> None:
        assert not self.violations, (f"{len(self.violations)} round-robin violation(s); first: "
                                     f"{self.violations[0]}")
