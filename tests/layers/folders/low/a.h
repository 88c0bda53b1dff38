#pragma once
// A lower folder that includes a higher one: folders_check_catches_test expects this caught.
#include "high/b.h"
