"""GPU fixtures for the collector's `fake` backend, made from the repository's real H100 fixture."""
import json
import os

H100 = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "collector", "tests", "fixtures", "gpu", "h100.json")


def widened(path, n):
    """Writes to `path` the two-board H100 fixture widened to `n` boards, Xid events left out (one-shot,
    and events, not series)."""
    with open(H100) as f:
        d = json.load(f)
    devices = []
    for i in range(n):
        dev = json.loads(json.dumps(d["devices"][i % 2]))
        dev["index"] = i
        dev["uuid"] = dev["uuid"][:-2] + f"{i:02d}"
        dev["pci_bus_id"] = f"00000000:{(0x18 + 0x10 * i) % 256:02X}:00.0"
        dev["processes"] = []
        devices.append(dev)
    d["devices"], d["xid_events"] = devices, []
    with open(path, "w") as f:
        json.dump(d, f)
