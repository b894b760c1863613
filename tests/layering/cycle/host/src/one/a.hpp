#pragma once
#include "one/b.hpp"
