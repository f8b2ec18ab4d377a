# One CMake target per module of cmake/layers.txt, each seeing only the
# headers of its own and lower layers, so that an include that runs up the
# table fails to build.
#
# Every module M gets a staging folder of symbolic links in the build tree:
#
#   layers/M/pub/lanemap/X.h  -> include/lanemap/X.h  for M's public headers
#   layers/M/priv/M/Y.h       -> M/Y.h                for M's internal headers
#
# The object library lanemap_M has both as PUBLIC include folders and links
# the module below it, so its sources see the headers of M and of every
# lower layer, and no higher layer's.  Neither the source root nor include/
# is on a module's include path.  Each public header is also compiled alone in
# lanemap_M_headers, against exactly M's folders, so a header that
# includes one from a higher layer fails even when no source of M
# includes it.  What include paths cannot stop -- a relative include such
# as "../solver/plan.h" -- tests/test_layers.c rejects.
#
# Sets LANEMAP_LAYERS (module names, lowest first), LANEMAP_LIB_MODULES
# (those with sources in the library) and LANEMAP_LIB_OBJECTS (their
# $<TARGET_OBJECTS:...>).

set(LANEMAP_LAYER_TABLE ${CMAKE_SOURCE_DIR}/cmake/layers.txt)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${LANEMAP_LAYER_TABLE})
file(STRINGS ${LANEMAP_LAYER_TABLE} _lines REGEX "^[a-z]")

set(_stage ${CMAKE_BINARY_DIR}/layers)
# Remove the links of the last configure (links only: file(REMOVE) does not
# follow them), so a header moved to another module leaves no stale link.
file(GLOB_RECURSE _old LIST_DIRECTORIES false ${_stage}/*/pub/*
                                               ${_stage}/*/priv/*)
if(_old)
  file(REMOVE ${_old})
endif()

set(LANEMAP_LAYERS)
set(LANEMAP_LIB_MODULES)
set(LANEMAP_LIB_OBJECTS)
set(_below "")
foreach(_line IN LISTS _lines)
  string(REGEX REPLACE "[ \t]+" ";" _f "${_line}")
  list(POP_FRONT _f _m)
  list(APPEND LANEMAP_LAYERS ${_m})
  # internal headers
  file(MAKE_DIRECTORY ${_stage}/${_m}/priv/${_m})
  file(GLOB _hdrs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${_m}/*.h)
  foreach(_h IN LISTS _hdrs)
    get_filename_component(_n ${_h} NAME)
    file(CREATE_LINK ${_h} ${_stage}/${_m}/priv/${_m}/${_n} SYMBOLIC)
  endforeach()
  if(_m STREQUAL "cli")
    continue() # the executable (CMakeLists.txt), on layers/cli/priv
  endif()
  # public headers
  file(MAKE_DIRECTORY ${_stage}/${_m}/pub/lanemap)
  foreach(_h IN LISTS _f)
    if(NOT EXISTS ${CMAKE_SOURCE_DIR}/include/lanemap/${_h})
      message(FATAL_ERROR "cmake/layers.txt: ${_m} owns ${_h}, which "
                          "include/lanemap/ does not have")
    endif()
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/include/lanemap/${_h}
         ${_stage}/${_m}/pub/lanemap/${_h} SYMBOLIC)
  endforeach()

  file(GLOB _src CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${_m}/*.c)
  if(_src)
    add_library(lanemap_${_m} OBJECT ${_src})
    list(APPEND LANEMAP_LIB_MODULES ${_m})
    list(APPEND LANEMAP_LIB_OBJECTS $<TARGET_OBJECTS:lanemap_${_m}>)
  else()
    add_library(lanemap_${_m} INTERFACE) # headers only (the umbrella)
  endif()
  if(_src)
    target_include_directories(lanemap_${_m}
      PUBLIC ${_stage}/${_m}/pub ${_stage}/${_m}/priv
      PRIVATE ${CMAKE_BINARY_DIR}/generated)
    target_link_libraries(lanemap_${_m} PUBLIC ${_below} lanemap_deps)
    target_compile_definitions(lanemap_${_m} PRIVATE
      LANEMAP_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  else()
    target_include_directories(lanemap_${_m} INTERFACE ${_stage}/${_m}/pub)
    target_link_libraries(lanemap_${_m} INTERFACE ${_below} lanemap_deps)
  endif()

  # each public header alone, against this layer's folders only
  set(_checks)
  foreach(_h IN LISTS _f)
    string(REGEX REPLACE "\\.h$" "" _stem ${_h})
    set(_c ${_stage}/${_m}/check/${_stem}.c)
    file(CONFIGURE OUTPUT ${_c} CONTENT
         "#include \"lanemap/${_h}\"\nint lm_layer_check_${_stem};\n")
    list(APPEND _checks ${_c})
  endforeach()
  if(_checks)
    add_library(lanemap_${_m}_headers OBJECT ${_checks})
    target_link_libraries(lanemap_${_m}_headers PRIVATE lanemap_${_m})
  endif()
  set(_below lanemap_${_m})
endforeach()
