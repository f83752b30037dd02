# A stand-in for Triton's qa/common/test_util.py, of which the vendored QA tests use only
# TestResultCollector, MIB, GIB, get_server_process_from_env and wait_for_stable_rss (test_util.py itself imports
# ml_dtypes, which Debian does not package). These are Triton's, unchanged.
# TestResultCollector as Triton's: it records the class's result totals in test_results.txt,
# for Triton's check_test_results; infernode's runner (run_unittest.py) reads each case instead.
import json
import os
import unittest

MIB = 2**20
GIB = 2**30


def get_server_process_from_env(env_var="SERVER_PID"):
    """A psutil.Process for the server under test (run-in-namespace.sh sets SERVER_PID)."""
    import psutil

    pid_str = os.environ.get(env_var)
    if not pid_str:
        raise AssertionError(f"{env_var} env var is not set")
    try:
        return psutil.Process(int(pid_str))
    except (ValueError, psutil.NoSuchProcess) as e:
        raise AssertionError(f"Invalid or stale {env_var}={pid_str!r}: {e}")


def wait_for_stable_rss(server, rss_tolerance_bytes=0.1 * MIB, stable_threshold=10):
    """Wait until the RSS of the server is stable."""
    import time

    last_rss = None
    stable_count = 0
    while True:
        rss = server.memory_info().rss
        if last_rss is not None and abs(rss - last_rss) < rss_tolerance_bytes:
            stable_count += 1
        else:
            stable_count = 0
        last_rss = rss
        if stable_count >= stable_threshold:
            break
        time.sleep(0.1)
    return


class TestResultCollector(unittest.TestCase):
    @classmethod
    def setResult(cls, total, errors, failures):
        cls.total, cls.errors, cls.failures = total, errors, failures

    @classmethod
    def tearDownClass(cls):
        json_res = {"total": cls.total, "errors": cls.errors, "failures": cls.failures}
        with open("test_results.txt", "w+") as f:
            f.write(json.dumps(json_res))

    def run(self, result=None):
        test_result = super().run(result)
        self.setResult(test_result.testsRun, len(test_result.errors), len(test_result.failures))
        return test_result
