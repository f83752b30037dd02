"""A small harness for the checks in check_*.py: each check is a function; the run prints one
line per check (PASS / FAIL with the reason) and exits 1 when any failed, so the jest runner
(test/integration/python-clients.test.ts) shows exactly which of NVIDIA's client calls differ."""
import argparse
import asyncio
import sys
import traceback

_CHECKS = []


def check(fn):
    """Registers a check (a plain or async function taking the server URL)."""
    _CHECKS.append(fn)
    return fn


def expect(condition, what):
    if not condition:
        raise AssertionError(what)


def expect_error(fn, status, text):
    """fn() must raise tritonclient's InferenceServerException with `status` and `text` in its message."""
    from tritonclient.utils import InferenceServerException

    try:
        fn()
    except InferenceServerException as e:
        expect(str(e.status()) == status, f"status {e.status()!r}, expected {status!r} ({e.message()})")
        expect(text in e.message(), f"message {e.message()!r} lacks {text!r}")
        return e
    raise AssertionError(f"no error, expected {status} {text!r}")


async def expect_error_async(coro, status, text):
    from tritonclient.utils import InferenceServerException

    try:
        await coro
    except InferenceServerException as e:
        expect(str(e.status()) == status, f"status {e.status()!r}, expected {status!r} ({e.message()})")
        expect(text in e.message(), f"message {e.message()!r} lacks {text!r}")
        return e
    raise AssertionError(f"no error, expected {status} {text!r}")


async def aio_management_calls(client_class, url):
    """The calls Triton's qa/L0_http and L0_grpc python_*_aio_test.py make, through `client_class`
    (tritonclient.http.aio's or tritonclient.grpc.aio's InferenceServerClient): each answers, and
    registering an empty region is refused."""
    from tritonclient.utils import InferenceServerException

    async with client_class(url) as client:
        await client.get_inference_statistics()
        await client.update_trace_settings()
        await client.get_trace_settings()
        await client.get_system_shared_memory_status()
        await client.unregister_system_shared_memory()
        await client.get_cuda_shared_memory_status()
        await client.unregister_cuda_shared_memory()
        for register in (lambda: client.register_system_shared_memory("", "", 0),
                         lambda: client.register_cuda_shared_memory("", b"", 0, 0)):
            try:
                await register()
            except InferenceServerException:
                continue
            raise AssertionError("registering an empty region was accepted")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-u", "--url", required=True)
    flags = parser.parse_args()
    failed = 0
    for fn in _CHECKS:
        try:
            result = fn(flags.url)
            if asyncio.iscoroutine(result):
                asyncio.run(result)
            print(f"PASS {fn.__name__}")
        except Exception as e:  # noqa: BLE001 - every failure is reported, the run goes on
            failed += 1
            print(f"FAIL {fn.__name__}: {type(e).__name__}: {e}")
            traceback.print_exc(limit=3, file=sys.stdout)
    print(f"{len(_CHECKS) - failed} of {len(_CHECKS)} checks passed")
    sys.exit(1 if failed else 0)
