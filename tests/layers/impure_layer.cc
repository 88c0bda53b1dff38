// Not compiled: the fixture of layers_check_catches_test, a "pure layer" file that breaks the
// rule twice, so the check is shown to fail when it should.
#include <fstream>

#include "store/ledger_store.h"
