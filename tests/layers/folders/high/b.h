#pragma once
// A header of a higher folder, for folders_check_catches_test.
int High();
