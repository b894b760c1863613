#pragma once
#include "one/a.hpp"
