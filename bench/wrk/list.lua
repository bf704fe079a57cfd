-- Lists of the URL's collection, over and over: wrk -s list.lua URL-of-a-collection
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "report.lua")
