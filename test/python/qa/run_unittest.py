# Runs named unittest cases (module.Class.test_name) and writes one JSON object to the file given
# by --out: {case: {"outcome": "passed" | "failed" | "error" | "skipped", "detail": text}}. A case
# with subtests fails when any subtest fails. Used by test/integration/python-qa.test.ts.
import argparse
import json
import unittest


class CaseResult(unittest.TextTestResult):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outcomes = {}

    def _set(self, test, outcome, detail=""):
        case = test.id() if not hasattr(test, "test_case") else test.test_case.id()
        previous = self.outcomes.get(case)
        if previous and previous["outcome"] in ("failed", "error"):
            previous["detail"] += "\n" + detail
            return
        self.outcomes[case] = {"outcome": outcome, "detail": detail}

    def addSuccess(self, test):
        super().addSuccess(test)
        self.outcomes.setdefault(test.id(), {"outcome": "passed", "detail": ""})

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._set(test, "failed", self._exc_info_to_string(err, test))

    def addError(self, test, err):
        super().addError(test, err)
        self._set(test, "error", self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._set(test, "skipped", reason)

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._set(test, "failed" if failed else "error", f"{subtest.id()}:\n{self._exc_info_to_string(err, test)}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("cases", nargs="+")
    args = parser.parse_args()
    suite = unittest.defaultTestLoader.loadTestsFromNames(args.cases)
    runner = unittest.TextTestRunner(verbosity=2, resultclass=CaseResult)
    result = runner.run(suite)
    for case in args.cases:
        result.outcomes.setdefault(case, {"outcome": "error", "detail": "not run (collection failed?)"})
    with open(args.out, "w") as f:
        json.dump(result.outcomes, f, indent=1)


if __name__ == "__main__":
    main()
