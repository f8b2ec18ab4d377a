# Finds every dependency of liblanemap.  A missing one stops configuration
# with the Debian package that provides it.
find_package(PkgConfig)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "pkg-config not found: apt-get install pkg-config")
endif()

# LLVM 19, through its CMake package; we link the single shared libLLVM-19.
# No version in find_package: LLVMConfigVersion.cmake accepts only an exact
# major.minor, so a request for "19" (19.0) rejects 19.1.  Check the major.
find_package(LLVM CONFIG QUIET
  HINTS /usr/lib/llvm-19/lib/cmake/llvm /usr/lib/llvm-19/cmake)
if(NOT LLVM_FOUND OR NOT LLVM_VERSION_MAJOR EQUAL 19)
  message(FATAL_ERROR "LLVM 19 not found: apt-get install llvm-19-dev")
endif()
find_library(LANEMAP_LLVM_LIB NAMES LLVM-19 LLVM
  PATHS ${LLVM_LIBRARY_DIRS} NO_DEFAULT_PATH)
if(NOT LANEMAP_LLVM_LIB)
  message(FATAL_ERROR "libLLVM-19.so not found: apt-get install llvm-19-dev")
endif()
message(STATUS "LLVM ${LLVM_PACKAGE_VERSION}: ${LANEMAP_LLVM_LIB}")

# GLPK ships no pkg-config file on Debian.
find_path(GLPK_INCLUDE_DIR glpk.h)
find_library(GLPK_LIBRARY NAMES glpk)
if(NOT GLPK_INCLUDE_DIR OR NOT GLPK_LIBRARY)
  message(FATAL_ERROR "GLPK not found: apt-get install libglpk-dev")
endif()

# XGBoost (the learned cost model, costmodel/learned.c), by header and
# library: Debian's xgboost.pc names libdir /usr/lib, not the multiarch
# folder the library is in, and its CMake package imports the `xgboost`
# command as well, which libxgboost-dev does not install.
find_path(XGBOOST_INCLUDE_DIR xgboost/c_api.h)
find_library(XGBOOST_LIBRARY NAMES xgboost)
if(NOT XGBOOST_INCLUDE_DIR OR NOT XGBOOST_LIBRARY)
  message(FATAL_ERROR "XGBoost (xgboost/c_api.h, libxgboost.so) not found: "
                      "apt-get install libxgboost-dev")
endif()
# its folder, for lanemap.pc's Libs.private (liblanemap.a's consumers)
get_filename_component(LANEMAP_XGBOOST_LIBDIR ${XGBOOST_LIBRARY} DIRECTORY)

macro(lanemap_pkg var module debpkg)
  pkg_check_modules(${var} QUIET IMPORTED_TARGET ${module})
  if(NOT ${var}_FOUND)
    message(FATAL_ERROR "${module} not found: apt-get install ${debpkg}")
  endif()
endmacro()
lanemap_pkg(LAPACKE lapacke liblapacke-dev)
lanemap_pkg(OPENBLAS openblas libopenblas-dev)
lanemap_pkg(CJSON libcjson libcjson-dev)
lanemap_pkg(HWLOC hwloc libhwloc-dev)
lanemap_pkg(SLEEF sleef libsleef-dev)

find_package(Threads REQUIRED)

add_library(lanemap_deps INTERFACE)
target_include_directories(lanemap_deps INTERFACE ${LLVM_INCLUDE_DIRS}
                                                  ${GLPK_INCLUDE_DIR}
                                                  ${XGBOOST_INCLUDE_DIR})
target_link_libraries(lanemap_deps INTERFACE
  ${LANEMAP_LLVM_LIB} ${GLPK_LIBRARY} ${XGBOOST_LIBRARY}
  PkgConfig::LAPACKE PkgConfig::OPENBLAS PkgConfig::CJSON PkgConfig::HWLOC
  PkgConfig::SLEEF Threads::Threads m)
