"""A zombie member: three members count words (members_it.py) with a short session
(session.timeout.ms = 3000 in from_kafka's `config`); m2 is SIGSTOPped past the session
timeout, the group gives its partitions to m1 and m3 (restored from the store), the new
owners checkpoint them with their newer claims, then m2 gets SIGCONT and wakes up holding
state and positions it no longer owns: it may process what it had fetched and write late
checkpoints before it learns that its assignment is lost. Then the new owner of one of the
zombie's partitions is SIGKILLed, so that the partition is restored from the store once
more, with the zombie's late checkpoints in it. kcat keeps producing throughout; the last
count of every word is its true count.

Exactness alone cannot show that the zombie's late checkpoints never win: every checkpoint
entry holds a group's state and its position together, so restoring a stale one replays
more but still ends exact. What the store did is checked in the logs and in
`sluiced checkpoints` as far as they show it (see check_fencing; after the stop, every key
group restores from a committed entry with its highest claim: check_store).

Label torture (about a minute)."""

import time
import unittest

from members_it import PARTITIONS, MembersTestCase, wait_for_owners


class ZombieTest(MembersTestCase):
    MODE = "by_word"
    CONSUMER_CONFIG = {
        "fetch.wait.max.ms": "10",
        # 2000 ms made the mock never finish the first join of three members (60 s).
        "session.timeout.ms": "3000",
        "heartbeat.interval.ms": "300",
    }

    def test_zombie_member_never_wins(self):
        self.require_member_flag()
        cfg = self.write_pipeline()
        records = self.make_records()
        m1, m2, m3 = (self.member(n) for n in ("m1", "m2", "m3"))
        for m in (m1, m2, m3):
            m.start(cfg)
        self.start_producer(records, seconds=50)
        wait_for_owners(self, [m1, m2, m3], PARTITIONS, timeout=60, each=True,
                        what="three members share the partitions")
        self.producer.wait_fraction(0.2, timeout=60)
        taken = sorted(m2.owned())
        at_stop = {m.name: m.mark() for m in (m1, m2, m3)}
        m2.sigstop()
        stopped_at = time.monotonic()
        self.note(f"SIGSTOP m2 (owns in{taken}) at {self.producer.sent} records, "
                  f"{self.count('out')} out")
        # m1 and m3 take the zombie's partitions (after its session timed out).
        owners = wait_for_owners(self, [m1, m3], PARTITIONS, timeout=60,
                                 what="m1 and m3 took the zombie's partitions")
        # Let the new owners store checkpoints holding those partitions (newer claims).
        time.sleep(4 * self.INTERVAL_MS / 1000 + 1)
        at_wake = {m.name: m.mark() for m in (m1, m2, m3)}
        m2.cont()
        self.note(f"SIGCONT m2 after {time.monotonic() - stopped_at:.1f} s, at "
                  f"{self.producer.sent} records")
        # The zombie learns that it lost its partitions, and rejoins.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "assignment lost" not in m2.log():
            time.sleep(0.2)
        self.note("m2 logged 'assignment lost'" if "assignment lost" in m2.log()
                  else "m2 did not log 'assignment lost' within 30 s")
        time.sleep(2 * self.INTERVAL_MS / 1000 + 0.5)   # its late checkpoints, if any
        # Move one of the zombie's partitions once more: kill its new owner, so that it is
        # restored from the store with the zombie's late epochs in it.
        p = taken[0]
        new_owner = m1 if p in owners["m1"] else m3
        self.assertLess(self.producer.fraction(), 1.0, "records must still flow")
        new_owner.kill()
        self.note(f"SIGKILL {new_owner.name} (new owner of in[{p}]) at {self.producer.sent} "
                  "records")
        time.sleep(self.rng.uniform(0.0, 1.0))
        new_owner.start(cfg)
        self.producer.finish()
        self.wait_for_end([m1, m2, m3], timeout=240)
        self.stop_all()
        self.check_counts()
        self.check_fencing(cfg, taken, at_stop, at_wake)
        self.check_store(cfg)
        print(self.notes[-1])

    def check_fencing(self, cfg, taken, at_stop, at_wake):
        """From the host's restore log lines ("node 'in' was assigned key groups G (epoch
        E of M, claim C)"): the zombie's key groups (partition p is group p + 1)
        - were claimed by the new owners with a claim above the zombie's;
        - after the zombie woke, were never restored from an entry with a claim below the
          new owners' (the zombie's late checkpoints never win).
        What the logs cannot show: whether the zombie's late checkpoints held the groups
        at all (the store strips them and says so, which is noted, not required: the
        zombie may learn of its loss before its next checkpoint)."""
        m1, m2, m3 = (self.members[n] for n in ("m1", "m2", "m3"))
        first_note = len(self.notes)
        groups = [p + 1 for p in taken]
        every, since_stop = m2.restores(), m2.restores(at_stop["m2"])
        before = {}   # the zombie's last claim of each group before it was stopped
        for e in every[:len(every) - len(since_stop)]:
            if e["group"] in groups:
                before[e["group"]] = e["claim"]
        takeover, later = {}, []   # the newest claim of each group while m2 was stopped
        for m in (m1, m3):
            since_stop, since_wake = m.restores(at_stop[m.name]), m.restores(at_wake[m.name])
            for e in since_stop[:len(since_stop) - len(since_wake)]:
                g = e["group"]
                if g in groups and (g not in takeover or e["claim"] > takeover[g][1]):
                    takeover[g] = (m.name, e["claim"], e["line"])
        for m in (m1, m2, m3):
            later += [dict(e, member=m.name) for e in m.restores(at_wake[m.name])
                      if e["group"] in groups]
        problems = []
        if not before or not takeover:
            problems.append(f"no restore lines for the zombie's groups {groups} (zombie's "
                            f"claims {before}, takeover {takeover}): is the host's restore "
                            "on assignment logging?")
        for g in groups:
            if g in before and g in takeover and takeover[g][1] <= before[g]:
                problems.append(f"group {g}: the new owner {takeover[g][0]} claimed {takeover[g][1]}"
                                f", not above the zombie's claim {before[g]}")
        for e in later:
            g = e["group"]
            if g in takeover and e["claim"] <= takeover[g][1]:
                problems.append(f"group {g}: claimed {e['claim']} by {e['member']} after the "
                                f"zombie woke, not above the takeover's {takeover[g][1]}")
            if g in takeover and e["epoch"] is not None and e["source"] == "m2":
                # Restored from one of the zombie's entries: only right when the zombie
                # owned the group again since (a claim above the takeover's) and stored it.
                claims_of_zombie = [x["claim"] for x in later
                                    if x["member"] == "m2" and x["group"] == g]
                if not any(c > takeover[g][1] for c in claims_of_zombie):
                    problems.append(f"group {g} restored from the zombie's checkpoint after it "
                                    f"woke: {e['line']}")
        stripped = [ln for ln in m2.log().splitlines() if "claimed by another task or member" in ln]
        elsewhere = sum("claimed by another task or member" in m.all_logs() for m in (m1, m3))
        self.note(f"zombie's groups {groups}: its claims {before}, takeover "
                  f"{ {g: t[:2] for g, t in takeover.items()} }, "
                  f"{len(later)} restores of them after it woke")
        self.note(f"zombie's checkpoints stripped of lost groups: {len(stripped)} times"
                  + (f" (first: {stripped[0]})" if stripped else
                     " (librdkafka's own session check revokes its assignment as it wakes, "
                     "usually before its next checkpoint)")
                  + f"; other members' runs that stripped some: {elsewhere}")
        if problems:
            self.fail_with_report("fencing:\n" + "\n".join(problems))
        print("\n".join(self.notes[first_note:]))


if __name__ == "__main__":
    unittest.main()
