local keep = setmetatable({}, {__gc = function() while true do end end})
return function(x) return x end