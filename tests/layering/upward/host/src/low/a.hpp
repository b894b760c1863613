#pragma once
#include "high/b.hpp"
