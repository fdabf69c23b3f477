# cmake -DEXE=path/to/compatlab -P cmake/portable-libs.cmake
#
# Copies the shared libraries EXE needs, except glibc's own (present on every
# Linux machine), into EXE's directory, where its DT_RPATH ($ORIGIN) finds them.
# The copies of an earlier build are removed first, so that the libraries are
# resolved on this machine's paths only. Fails on a library that cannot be
# resolved here.
get_filename_component(_dir "${EXE}" DIRECTORY)
file(GLOB _old "${_dir}/*.so*")
if(_old)
  file(REMOVE ${_old})
endif()
file(GET_RUNTIME_DEPENDENCIES
  EXECUTABLES "${EXE}"
  RESOLVED_DEPENDENCIES_VAR _resolved
  UNRESOLVED_DEPENDENCIES_VAR _unresolved
  CONFLICTING_DEPENDENCIES_PREFIX _conflict
  PRE_EXCLUDE_REGEXES "^(libc|libm|libdl|libpthread|librt|libresolv|libutil)\\.so" "^ld-linux"
  POST_EXCLUDE_REGEXES "/(libc|libm|libdl|libpthread|librt|libresolv|libutil)\\.so" "/ld-linux")
if(_unresolved)
  message(FATAL_ERROR "portable-libs: cannot resolve ${_unresolved} for ${EXE}")
endif()
# The same library seen on two paths (/lib and /usr/lib on a merged-/usr system): either does.
foreach(_name IN LISTS _conflict_FILENAMES)
  list(GET _conflict_${_name} 0 _first)
  list(APPEND _resolved "${_first}")
endforeach()
foreach(_lib IN LISTS _resolved)
  get_filename_component(_name "${_lib}" NAME)
  file(COPY_FILE "${_lib}" "${_dir}/${_name}")
endforeach()
