"""Hostile sketches against the renderer's sandbox: forged pictures, egress, blame, bounded work.

Each fixture in tests/renderers/sandbox/ names its expected render-stage verdict on its first line (`// expect: codes`,
`// expect: pass`, `// expect: any_of codes`, or `// expect: honest`: it passes and its picture is byte for
byte the honest painting (HONEST) its attack is wrapped around, so the attack changed nothing). They use APIs the
static check refuses, so they are rendered directly and judged with `runtime_violations`: the renderer must
hold even against a sketch the static check would have let through by mistake. The older fixtures were written
against the page (its DOM, canvas, network and harness objects); in the sketch's compartment none of those
names exist, so each now fails as a runtime error. All run on a one-slot pool, so a lost slot stalls the next
render, while real TCP and UDP listeners on 127.0.0.1 wait for a packet that must never come.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from pathlib import Path

import pytest
import pytest_asyncio

from ground.records import RenderResult
from ground.settings import GateSettings
from renderers import BrowserPool
from rewards.gate import gate, runtime_violations, static_check
from tests.renderers.hostile import HONEST, expectation, meets, reward_parts_json


FIXTURES = Path(__file__).parent / "sandbox"
NAMES = sorted(path.name for path in FIXTURES.glob("*.js"))
# Two fixtures run into it on purpose; a good sketch on the loaded two-core test machine needs ~2 s.
DEADLINE_S = 6.0
FLOOR = GateSettings().coverage_floor


class Listeners:
    """A TCP and a UDP socket on 127.0.0.1 that count every connection and datagram they get."""

    def __init__(self) -> None:
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.arrived: list[str] = []
        self._open = True
        self._threads = [threading.Thread(target=self._serve, args=(s,), daemon=True) for s in (self.tcp, self.udp)]
        for thread in self._threads:
            thread.start()

    def _serve(self, sock: socket.socket) -> None:
        sock.settimeout(0.1)
        while self._open:
            try:
                if sock.type == socket.SOCK_STREAM:
                    connection, peer = sock.accept()
                    connection.close()
                else:
                    _, peer = sock.recvfrom(4096)
            except (TimeoutError, OSError):
                continue
            self.arrived.append(f"{'tcp' if sock.type == socket.SOCK_STREAM else 'udp'} from {peer}")

    def source(self, name: str) -> str:
        text = (FIXTURES / name).read_text()
        return text.replace("{TCP}", str(self.tcp.getsockname()[1])).replace("{UDP}", str(self.udp.getsockname()[1]))

    def close(self) -> None:
        self._open = False
        for thread in self._threads:
            thread.join()
        self.tcp.close()
        self.udp.close()


@pytest.fixture(scope="module")
def listeners():
    server = Listeners()
    yield server
    server.close()


@pytest_asyncio.fixture(scope="module")
async def one_slot():
    async with BrowserPool(browsers=1, pages_per_browser=1, deadline_s=DEADLINE_S) as pool:
        yield pool


def test_there_are_at_least_40_hostile_fixtures_each_with_a_verdict():
    assert len(NAMES) >= 40
    assert all(
        expectation(FIXTURES / name)[0] in ("pass", "honest") or expectation(FIXTURES / name)[1] for name in NAMES
    )


@pytest.mark.browser
async def test_every_hostile_sketch_gets_its_verdict_no_packet_leaves_and_a_good_sketch_renders_after(
    one_slot, listeners, flower_sketch, capfd, caplog
):
    honest = (await one_slot.render(HONEST)).png
    wrong, sizes = {}, {}
    for name in NAMES:
        render = await one_slot.render(listeners.source(name))
        if not meets(FIXTURES / name, set(runtime_violations(render, FLOOR)), render.png, honest):
            wrong[name] = (sorted(runtime_violations(render, FLOOR)), render.fault_detail, render.errors[:2])
        sizes[name] = len(reward_parts_json(render, runtime_violations(render, FLOOR)))  # every one serialises
    assert wrong == {}
    # Bounded answers: no verdict and record past 40 kB (a flood of attempts once made a 30 MB line), and nothing
    # a sketch caused printed a traceback or logged an error (a request flood once printed 8,228 of them).
    assert max(sizes.values()) < 40_000, max(sizes.items(), key=lambda item: item[1])
    printed = capfd.readouterr()
    assert "Traceback" not in printed.out + printed.err
    assert [record.getMessage() for record in caplog.records if record.levelname in ("ERROR", "CRITICAL")] == []
    good = await one_slot.render(flower_sketch, seed=1)
    assert good.ok and good.finished and runtime_violations(good, FLOOR) == {}
    await asyncio.sleep(0.5)  # a STUN retry or a late preconnect would arrive by now
    assert listeners.arrived == []
    await asyncio.gather(*one_slot._cleanups)
    assert one_slot._free.qsize() == 1  # the one slot is back, neither lost nor duplicated


STUN_FROM_PAGE = """async (port) => {
  const pc = new RTCPeerConnection({ iceServers: [{ urls: "stun:127.0.0.1:" + port }] });
  pc.createDataChannel("x");
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((resolve) => setTimeout(resolve, 1500));
  pc.close();
}"""


async def stun_from_the_host_page(pool: BrowserPool, port: int) -> None:
    """Send STUN from a slot's host page: the harness's own code, which a sketch cannot reach, tests the wall below."""
    index, slot = await pool._take()
    try:
        await slot.page.evaluate(STUN_FROM_PAGE, port)
    finally:
        pool._free.put_nowait((index, slot))


@pytest.mark.browser
async def test_the_namespace_keeps_a_page_s_own_webrtc_in_and_without_it_stun_gets_out(one_slot, listeners):
    # The second wall, tested with code that has the whole page: the namespace holds even if the compartment did
    # not; the control pool without it lets STUN reach the listener, so the listener works.
    port = listeners.udp.getsockname()[1]
    await stun_from_the_host_page(one_slot, port)
    await asyncio.sleep(0.5)
    assert listeners.arrived == []
    async with BrowserPool(browsers=1, pages_per_browser=1, deadline_s=DEADLINE_S, isolate_network=False) as pool:
        await stun_from_the_host_page(pool, port)
    await asyncio.sleep(0.5)
    assert any(line.startswith("udp") for line in listeners.arrived)
    listeners.arrived.clear()


@pytest.mark.browser
async def test_chromium_runs_in_a_network_namespace_of_its_own(one_slot):
    namespaces = set()
    for pid in _chromium_pids():
        try:
            namespaces.add(os.readlink(f"/proc/{pid}/ns/net"))
        except OSError:  # a helper process that has just exited
            continue
    assert namespaces and os.readlink("/proc/self/ns/net") not in namespaces


@pytest.mark.browser
async def test_a_cancelled_render_gives_its_slot_back(one_slot):
    spinning = asyncio.ensure_future(one_slot.render("function setup() { while (true) {} }"))
    await asyncio.sleep(1.0)
    spinning.cancel()
    with pytest.raises(asyncio.CancelledError):
        await spinning
    after = await asyncio.wait_for(one_slot.render("function setup() { createCanvas(600, 600, WEBGL); }"), 20)
    assert after.ok and after.finished


@pytest.mark.parametrize(
    ("fault", "code"),
    [("navigation", "navigation"), ("readback", "readback_failed"), ("oversize", "oversize_picture")]
    + [("harness", "render_fault")],
)
def test_each_sketch_fault_is_a_gate_failure_with_its_own_code(fault, code):
    found = runtime_violations(RenderResult(ok=False, fault=fault, fault_detail="what happened"), FLOOR)
    assert found == {code: ["what happened"]}


def _chromium_pids() -> list[int]:
    """Chromium processes descended from this test process."""
    parents: dict[int, tuple[int, bytes]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            parents[int(stat.parent.name)] = (ppid, (stat.parent / "cmdline").read_bytes())
        except (OSError, ValueError):
            continue
    mine = {os.getpid()}
    for _ in range(6):
        mine |= {pid for pid, (ppid, _) in parents.items() if ppid in mine}
    return [pid for pid in mine if b"chromium" in parents.get(pid, (0, b""))[1]]


@pytest.mark.browser
async def test_reaching_for_every_harness_dependency_changes_nothing_but_the_sketch_s_own_painting(
    one_slot, flower_sketch
):
    # Everything the old in-page readback trusted, and everything the probe uses, replaced before setup, each
    # attempt caught: in the compartment these names are absent and the intrinsics frozen, so none lands.
    attempts = [
        'const forged = document.createElement("canvas");',
        'HTMLCanvasElement.prototype.toDataURL = () => "data:image/png;base64,AAAA";',
        "Element.prototype.setAttribute = () => {};",
        "Document.prototype.getElementById = () => null;",
        "window.MutationObserver = function () { return { observe() {}, disconnect() {} }; };",
        "Reflect.apply = () => {};",
        'JSON.stringify = () => "{}";',
        "Array.prototype.push = () => 0;",
        "Math.sin = () => 0;",
        "console.error = () => {};",
        "window.__wcWatch = { read: () => ({}) };",
        "globalThis.brush = null;",
    ]
    prelude = "".join(f"try {{ {line} }} catch (e) {{}}\n" for line in attempts)
    clean, patched = [await one_slot.render(source, seed=5) for source in (flower_sketch, prelude + flower_sketch)]
    assert clean.ok and patched.ok and patched.errors == []
    assert patched.png == clean.png


RUNTIME_KEY = """function setup() {
  createCanvas(600, 600, WEBGL);
  translate(-300, -300);
  background("#f6f0e4");
  brush.noStroke();
  brush.fill("#b0305a", 220);
  brush.circle(300, 300, 140, 0.3);
  const k = ["constr", "uctor"].join("");
  [][k][k]("brush.circle(300, 300, 200, 0.3)")();
}
"""


@pytest.mark.browser
async def test_a_key_built_at_run_time_passes_the_static_check_and_reaches_an_inert_constructor(one_slot):
    # No static rule follows a string's value: `[][k][k]` is a computed member of the sketch's own array. After
    # lockdown the Function constructor it reaches compiles nothing, and the error fails the gate.
    assert static_check(RUNTIME_KEY).passed
    verdict = await gate(RUNTIME_KEY, one_slot)
    assert not verdict.passed and verdict.violations == ["runtime_error"]
    assert any("not a valid constructor" in line for line in verdict.details["runtime_error"])
