# SPDX-License-Identifier: MIT
# cmake -DAR=ar -DLIB=libbrooq-client.a -DNNG=libnng.a -P merge_nng.cmake
# Appends every member of NNG's static library to LIB (an `ar -M` script: member
# names repeat in libnng.a, which `ar x` would overwrite).
foreach(v AR LIB NNG)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "merge_nng.cmake: -D${v}= is required")
  endif()
endforeach()
get_filename_component(dir "${LIB}" DIRECTORY)
set(tmp "${LIB}.merge")
file(WRITE "${tmp}.mri" "create ${tmp}\naddlib ${LIB}\naddlib ${NNG}\nsave\nend\n")
execute_process(COMMAND "${AR}" -M INPUT_FILE "${tmp}.mri" RESULT_VARIABLE rc
                WORKING_DIRECTORY "${dir}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "merge_nng.cmake: ${AR} -M failed (${rc}) merging ${NNG} into ${LIB}")
endif()
file(RENAME "${tmp}" "${LIB}")
file(REMOVE "${tmp}.mri")
