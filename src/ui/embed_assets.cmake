# Writes OUT, a C++ file holding every file of the folders DIRS, and the FILES, as bytes
# (ui_assets.h's table), sorted by name; a name given twice is an error.
set(paths "")
foreach(dir IN LISTS DIRS)
  file(GLOB found ${dir}/*)
  list(APPEND paths ${found})
endforeach()
list(APPEND paths ${FILES})
set(by_name "")
foreach(path IN LISTS paths)
  get_filename_component(name ${path} NAME)
  if(DEFINED path_of_${name})
    message(FATAL_ERROR "web UI: ${name} is both ${path_of_${name}} and ${path}")
  endif()
  set(path_of_${name} ${path})
  list(APPEND by_name ${name})
endforeach()
list(SORT by_name)
set(arrays "")
set(table "")
set(i 0)
foreach(name IN LISTS by_name)
  file(READ ${path_of_${name}} hex HEX)
  string(LENGTH "${hex}" digits)
  math(EXPR size "${digits} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  # A trailing 0: an empty file still makes a valid array.
  string(APPEND arrays "constexpr unsigned char kFile${i}[] = {${bytes}0};\n")
  string(APPEND table "    {\"${name}\", kFile${i}, ${size}},\n")
  math(EXPR i "${i} + 1")
endforeach()
file(WRITE ${OUT}.tmp
     "// Generated from ui/src and ui/vendor by src/ui/embed_assets.cmake; do not edit.\n"
     "#include \"ui/ui_assets.h\"\n\n"
     "namespace gpuledger::ui {\nnamespace {\n\n${arrays}\n}  // namespace\n\n"
     "const EmbeddedFile kEmbeddedFiles[] = {\n${table}};\n"
     "const std::size_t kEmbeddedFileCount = ${i};\n\n}  // namespace gpuledger::ui\n")
# Only a changed file is rewritten, so an unchanged UI recompiles nothing.
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
